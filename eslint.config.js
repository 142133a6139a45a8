import { defineConfig } from "eslint/config";
import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

/** Reading the environment is configuration's job: everything else gets its values from Config. */
const environmentReads = [
  { object: "process", property: "env", message: "Only src/config/ reads the environment; take the value from Config." },
];

export default defineConfig(
  { ignores: ["node_modules/", "test/artifacts/", "data/", ".scratch/", "dist/", "packages/*/dist/"] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { ...globals.node },
      parserOptions: {
        projectService: {
          allowDefaultProject: ["eslint.config.js", "scripts/*.mjs", "src/ui/public/*.js"],
          // The plain JavaScript files above (10 today); typescript-eslint's default allows 8.
          maximumDefaultProjectFileMatchCount_THIS_WILL_SLOW_DOWN_LINTING: 16,
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
  },
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      // node:test's test() and describe() return promises the runner itself awaits.
      "@typescript-eslint/no-floating-promises": [
        "error",
        { allowForKnownSafeCalls: [{ from: "package", package: "node:test", name: ["test", "describe", "it", "suite"] }] },
      ],
      "@typescript-eslint/no-misused-promises": "error",
      // A switch over a union lists every member, unless a default branch says what the rest do.
      "@typescript-eslint/switch-exhaustiveness-check": ["error", { considerDefaultExhaustiveForUnions: true }],
      "no-console": "error",
    },
  },
  {
    // The client's default token is its own (src/client/environment.ts): it runs without the service.
    files: ["src/**"],
    ignores: ["src/config/**", "src/client/environment.ts"],
    rules: {
      "no-restricted-properties": ["error", ...environmentReads],
      "no-restricted-imports": [
        "error",
        ...["process", "node:process"].map((name) => ({ name, importNames: ["env"], message: environmentReads[0].message })),
      ],
    },
  },
  {
    // An object literal's getter or setter is a new closure each time the literal is evaluated, and
    // gives each object a map of its own; on a request path V8 (Node 20) then keeps the request's
    // garbage alive through young collections (docs/performance.md). Use a class's accessors.
    files: ["src/**"],
    ignores: ["src/client/**", "src/ui/public/**"],
    rules: {
      "no-restricted-syntax": [
        "error",
        { selector: "ObjectExpression > Property[kind=/^(get|set)$/]", message: "No getters or setters in object literals: use a class (see RequestInput in src/http/mount-operations.ts)." },
      ],
    },
  },
  {
    // The client is published on its own (package.json "exports"): it must not pull in the service.
    files: ["src/client/**"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [{ regex: "^(?!\\./)", message: "src/client/ imports nothing outside its folder." }] },
      ],
    },
  },
  {
    // Plain JavaScript outside the TypeScript project (test hooks, the launchers' helper, the client's
    // build script): no types to check them against.
    files: ["test/**/*.mjs", "bin/**/*.js", "packages/**/*.mjs", "packages/**/*.js"],
    extends: [tseslint.configs.disableTypeChecked],
  },
  {
    files: ["test/**", "bench/**", "scripts/**", "src/maintenance/cli.ts", "src/ui/**"],
    rules: { "no-console": "off" },
  },
  {
    // Replaces console.warn to route ioredis's own warnings through the logger.
    files: ["src/observability/library-warnings.ts"],
    rules: { "no-console": "off" },
  },
);
