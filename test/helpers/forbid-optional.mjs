// Loaded with `--import` (or through NODE_OPTIONS, which forked workers inherit): from then on,
// resolving a module of an optional integration throws, so an import that reaches one fails loudly.
import { register } from "node:module";

register("./forbid-optional-hooks.mjs", import.meta.url);
