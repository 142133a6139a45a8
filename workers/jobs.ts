// Entry point of the side-work process: the feedback queue consumer. No logic here: see
// src/feedback/jobs-process.ts. Start it with bin/jobs (agenthost-jobs once installed).
import { runJobsProcess } from "../src/feedback/jobs-process.ts";

await runJobsProcess();
