// Entry point of one HTTP worker. No logic here: see src/worker/run-worker.ts.
import { runWorker } from "../src/worker/run-worker.ts";

// The LangChain setting bin/agenthost exports (src/config/langchain-environment.ts), for a worker
// started on its own; a worker forked by the primary inherits it.
process.env.LANGCHAIN_CALLBACKS_BACKGROUND ??= "false";
await runWorker();
