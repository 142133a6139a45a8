/**
 * Why the chat page could not listen on CHAT_UI_HOST:CHAT_UI_PORT, as the one line `bin/chat-ui`
 * prints before it exits: what is wrong and which setting to change, without a stack trace. Undefined
 * for an error that is not a failure to listen.
 */
export function listenRefusal(error: unknown, host: string, port: number): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  const syscall = (error as { syscall?: unknown } | undefined)?.syscall;
  if (typeof code !== "string") return undefined;
  const prefix = "the chat page cannot start:";
  switch (code) {
    case "EADDRINUSE":
      return `${prefix} CHAT_UI_PORT ${port} is already in use on ${host}: stop the process holding it, or set CHAT_UI_PORT to a free port (0 lets the system pick one)`;
    case "EACCES":
      return `${prefix} CHAT_UI_PORT ${port} needs privileges this process does not have: set CHAT_UI_PORT above 1023`;
    case "EADDRNOTAVAIL":
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `${prefix} CHAT_UI_HOST ${host} is not an address of this machine: set CHAT_UI_HOST to 127.0.0.1, 0.0.0.0 or one of its addresses`;
    default:
      if (syscall !== "listen" && syscall !== "getaddrinfo") return undefined;
      return `${prefix} CHAT_UI_PORT ${port} on CHAT_UI_HOST ${host} cannot be listened on (${code})`;
  }
}
