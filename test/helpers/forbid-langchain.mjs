// Loaded with `--import` after tsx: from then on, resolving any module of the `langchain` package
// throws, so an import that reaches it fails loudly instead of loading it.
import { register } from "node:module";

register("./forbid-langchain-hooks.mjs", import.meta.url);
