// Module resolution hooks (node:module register): tsx is not installed, as far as this process can
// tell. Resolving any module of the tsx package fails as a missing package does.
const TSX = /\/node_modules\/tsx\//;

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  if (!TSX.test(resolved.url)) return resolved;
  const error = new Error(`Cannot find package 'tsx' imported from ${context.parentURL} (refused by test/helpers/forbid-tsx-hooks.mjs)`);
  error.code = "ERR_MODULE_NOT_FOUND";
  throw error;
}
