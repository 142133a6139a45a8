// Entry point of one HTTP worker. No logic here: see src/worker/run-worker.ts.
import { runWorker } from "../src/worker/run-worker.ts";

await runWorker();
