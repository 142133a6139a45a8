// Module resolution hooks (node:module register): refuse the `langchain` package by its resolved URL.
const LANGCHAIN = /\/node_modules\/langchain\//;

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  if (LANGCHAIN.test(resolved.url)) throw new Error(`the langchain package was loaded: ${resolved.url} (from ${context.parentURL})`);
  return resolved;
}
