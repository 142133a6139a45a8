// Loaded with `--import`: from then on this process finds no tsx (see forbid-tsx-hooks.mjs).
import { register } from "node:module";

register("./forbid-tsx-hooks.mjs", import.meta.url);
