/** How often a cluster worker looks whether its primary is still its parent. */
export const PARENT_CHECK_MS = 2_000;

/**
 * Call `gone` once when this process's parent changes from the one it had at the start (a worker's
 * primary died and the worker was handed to another process, usually init). Node ends a cluster
 * worker when its IPC channel closes, but a channel can stay open without its primary (another
 * process holding the primary's end): this watch does not depend on it. The timer does not keep the
 * process alive. Returns a function that stops the watch.
 */
export function watchParent(gone: () => void, parentPid: () => number = () => process.ppid, everyMs = PARENT_CHECK_MS): () => void {
  const first = parentPid();
  const timer = setInterval(() => {
    if (parentPid() === first) return;
    clearInterval(timer);
    gone();
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
