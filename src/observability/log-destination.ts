// sonic-boom is CommonJS: its class is the module itself, and its `SonicBoom` property (the one
// name its types and Node's import of it share).
import type { DestinationStream } from "pino";
import sonicBoom from "sonic-boom";

/** Log lines are gathered up to this many bytes before they are written… */
const LOG_BATCH_BYTES = 4_096;
/** …or until this many milliseconds have passed, so a quiet service's last lines are not held back. */
const LOG_FLUSH_MS = 100;

/**
 * Stdout for the log lines, written asynchronously and in batches: a request's line does not wait
 * for a write to the pipe or terminal; lines are written once LOG_BATCH_BYTES have gathered or
 * LOG_FLUSH_MS after the last write, whichever comes first, so a busy process makes one write for
 * many lines. What is pending is written when the process exits, however it exits (also after a
 * fatal error); only a SIGKILL loses the last LOG_FLUSH_MS of lines.
 *
 * Once stdout's reader is gone (the log collector died, `agenthost | tee` lost its tee), lines are
 * dropped and the process goes on, and exits when told to. pino's own destination waits for such a
 * reader forever when the process exits within LOG_FLUSH_MS of losing it (its sonic-boom retries
 * the exit's write every 100 ms): a worker then never ended. Here the exit's write is tried once.
 */
export function stdoutLogDestination(): DestinationStream {
  const stream = new sonicBoom.SonicBoom({ fd: 1, sync: false, minLength: LOG_BATCH_BYTES, periodicFlush: LOG_FLUSH_MS });
  let open = true;
  // Any failed write (EPIPE above all): nobody reads these lines any more.
  stream.on("error", () => {
    open = false;
  });
  process.once("exit", () => {
    if (!open) return;
    open = false;
    try {
      stream.flushSync();
    } catch {
      // The reader is gone, or too slow to take the last lines: the exit does not wait for it.
    }
  });
  return {
    write: (line) => {
      if (open) stream.write(line);
    },
  };
}
