import type { Request, RequestHandler } from "express";
import { ApiError } from "../api-error.ts";
import { RunAborted } from "../../errors/classify.ts";
import type { Runtime } from "../http-runtime.ts";
import { scopeOf } from "../request-scope.ts";

/**
 * Takes one of the worker's REQUEST_MAX_CONCURRENT slots before the body is read, and starts the
 * request's deadline. A control request (`isControl`: the table's `control` operations, POST
 * /cancel) takes a slot of the worker's own small reserve instead (runtime.controlAdmission), so a
 * stop button gets through while the runs it would stop fill the worker; its small body has been
 * read by then (app.ts), so a stalled body never holds the reserve. Slot, deadline timer and
 * disconnect listener are all released when the response closes, however it ends; at the deadline a
 * response still unread is closed by force.
 */
export function admission(runtime: Runtime, isControl: (req: Request) => boolean = () => false): RequestHandler {
  const timeoutMs = runtime.config.REQUEST_TIMEOUT * 1000;
  return async (req, res, next) => {
    if (runtime.lifecycle.draining) {
      res.setHeader("Connection", "close");
      runtime.metrics.admissionRejections.inc({ reason: "shutting_down" });
      throw new ApiError("shutting_down");
    }
    const controller = new AbortController();
    const scope = scopeOf(res);
    const onClose = () => {
      if (!res.writableFinished && !scope.outlives) controller.abort(new RunAborted("client_disconnected"));
    };
    res.on("close", onClose);
    const release = await (isControl(req) ? runtime.controlAdmission : runtime.admission).acquire(controller.signal);
    if (!release) {
      res.off("close", onClose);
      runtime.metrics.admissionRejections.inc({ reason: "service_busy" });
      throw new ApiError("service_busy");
    }
    if (controller.signal.aborted) {
      // The client left while queued for a slot.
      release();
      return;
    }
    const deadline = setTimeout(() => {
      runtime.metrics.deadlineExpiries.inc();
      controller.abort(new RunAborted("deadline"));
      // An answer written in full that the client has not taken by now never will be: close the
      // connection so the slot is not held for it. (A stream still running ends itself on the abort.)
      if (res.writableEnded && !res.writableFinished) res.destroy();
    }, timeoutMs);
    const settle = () => {
      clearTimeout(deadline);
      release();
    };
    res.on("close", () => {
      // Work kept for a later request (a resumable stream, an idempotent answer) outlives its response (within the deadline).
      if (scope.outlives) scope.outlives.then(settle, settle);
      else settle();
    });
    scope.run = controller;
    next();
  };
}
