import { ChatUiConfigError, loadChatUiConfig } from "../config/chat-ui.ts";
import { STARTUP_REFUSED } from "../coordination/protocol.ts";
import { listenRefusal } from "./listen-refusal.ts";
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
  let page;
  try {
    page = await startChatServer(config);
  } catch (error) {
    // A busy port (or a host that is not this machine's): one line naming the setting, as agenthost does.
    const refusal = listenRefusal(error, config.host, config.port);
    if (refusal === undefined) throw error;
    process.stderr.write(`${refusal}\n`);
    process.exit(STARTUP_REFUSED);
  }
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
