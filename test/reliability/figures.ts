import fs from "node:fs";
import path from "node:path";

/**
 * Where reliability tests leave their figures for `npm run test:reliability` to print: one JSON
 * file per test file, `{title, lines, data}` — `lines` are printed as they are, `data` is for
 * tools. Tests of other parts of issue 11 (outages, kills) add their own files the same way.
 */
export const FIGURES_DIR = path.join("test", "artifacts", "reliability");

export interface FiguresFile {
  readonly title: string;
  readonly lines: readonly string[];
  readonly data: unknown;
}

export function recordFigures(name: string, figures: FiguresFile): void {
  fs.mkdirSync(FIGURES_DIR, { recursive: true });
  fs.writeFileSync(path.join(FIGURES_DIR, `${name}.json`), `${JSON.stringify(figures, null, 2)}\n`);
}
