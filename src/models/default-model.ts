import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { Config } from "../config/schema.ts";
import { createModelCatalog } from "./catalog.ts";
import type { ProviderHttpPool } from "./http-pool.ts";

/**
 * The worker's default chat model, chosen once at startup: the fake model (USE_FAKE_MODEL=true),
 * else MODEL_CONFIGS.default, else the provider variables with DEFAULT_MODEL. With none of them,
 * startup stops with a ConfigError saying what to set. The full set of models is the ModelCatalog.
 */
export function createDefaultChatModel(config: Config, pool: Pick<ProviderHttpPool, "fetch" | "fetchWithTimeout">): BaseChatModel {
  return createModelCatalog(config, pool).default;
}
