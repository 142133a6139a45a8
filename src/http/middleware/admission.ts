import { Router, type RequestHandler } from "express";
import type { AdmissionLimiter } from "../../admission/limiter.ts";
import { ApiError } from "../api-error.ts";
import { RunAborted } from "../../errors/classify.ts";
import type { Runtime } from "../../runtime.ts";
import { expressPath, type Operation } from "../operation.ts";
import { scopeOf } from "../request-scope.ts";

/**
 * Takes one of the worker's REQUEST_MAX_CONCURRENT slots (or of `limiter`'s) before the body is
 * read, and starts the request's deadline. Slot, deadline timer and disconnect listener are all
 * released when the response closes, however it ends; at the deadline a response still unread is
 * closed by force. A request already admitted (by controlAdmission) passes through.
 */
export function admission(runtime: Runtime, limiter: AdmissionLimiter = runtime.admission): RequestHandler {
  const timeoutMs = runtime.config.REQUEST_TIMEOUT * 1000;
  return async (_req, res, next) => {
    if (scopeOf(res).run) {
      next();
      return;
    }
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
    const release = await limiter.acquire(controller.signal);
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
      // A resumable stream's run outlives its response (within the deadline).
      if (scope.outlives) scope.outlives.then(settle, settle);
      else settle();
    });
    scope.run = controller;
    next();
  };
}

/**
 * Admission for the table's control operations (`control: true`, POST /cancel): a slot of the
 * worker's own reserve (runtime.controlAdmission) instead of REQUEST_MAX_CONCURRENT's, so a stop
 * button gets through while the runs it would stop fill the worker. Mounted after authentication and
 * before the general admission, which lets the requests it admitted pass; the body limits still apply.
 */
export function controlAdmission(runtime: Runtime, operations: Readonly<Record<string, Operation>>): Router {
  const router = Router();
  const admit = admission(runtime, runtime.controlAdmission);
  for (const operation of Object.values(operations)) {
    if (operation.control) router[operation.method](expressPath(operation), admit);
  }
  return router;
}
