// Which conversation lock a worker takes by default: the memory backend's conversations live in
// its one process, so its locks stay there, whatever else is configured.
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryConversationLock } from "../../src/coordination/locks/memory-lock.ts";
import { loadConfig } from "../../src/config/load.ts";
import { closeScope, coordinationScope } from "../../src/coordination/scope.ts";
import { createLogger } from "../../src/observability/logger.ts";
import { conversationLock } from "../../src/coordination/coordination.ts";

const logger = createLogger({ LOG_LEVEL: "error" });

test("the memory backend locks in its own process, even with REDIS_URL set", async () => {
  const config = loadConfig({ AUTH_SECRET: "s3cret", USE_FAKE_MODEL: "true", MEMORY_BACKEND: "memory", REDIS_URL: "redis://127.0.0.1:1" });
  const scope = coordinationScope(config, logger);
  try {
    assert.equal(scope.kind, "redis", "cancels still reach every host");
    const lock = conversationLock(config, scope);
    assert.ok(lock instanceof MemoryConversationLock, lock.constructor.name);
  } finally {
    closeScope(scope);
  }
});
