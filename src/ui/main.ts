import { ChatUiConfigError, loadChatUiConfig } from "../config/chat-ui.ts";
import { startChatServer } from "./server.ts";

/** `bin/chat-ui`: read the environment, serve the chat page until SIGINT or SIGTERM. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadChatUiConfig();
  } catch (error) {
    if (error instanceof ChatUiConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
  const page = await startChatServer(config);
  console.log(`chat page on ${page.url} (agenthost at ${config.agenthostUrl})`);
  const stop = () => {
    page.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

await main();
