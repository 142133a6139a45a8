// Entry point of the supervising primary (bin/agenthost). No logic here: see primary.ts.
import { runPrimary } from "./primary.ts";

await runPrimary();
