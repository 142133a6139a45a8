import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { Config } from "../config/schema.ts";
import { ConfigError } from "../config/load.ts";
import { FakeChatModel } from "./fake-chat-model.ts";

/**
 * The worker's default chat model, chosen once at startup. This is the seam real providers plug
 * into (MODEL_CONFIGS, provider environment variables); until one is configured, only the fake
 * model can serve.
 */
export function createDefaultChatModel(config: Config): BaseChatModel {
  if (config.USE_FAKE_MODEL) return new FakeChatModel();
  throw new ConfigError([
    "no chat model is configured: set USE_FAKE_MODEL=true (deterministic test model, no key needed)",
  ]);
}
