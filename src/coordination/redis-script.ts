import type { Redis } from "ioredis";

/** A Lua script on one connection: its keys first, then its arguments. */
export type RedisScript = (...keysThenArgs: Array<string | number>) => Promise<unknown>;

/**
 * `lua` as a command of `client` named `name`, taking `keys` keys: ioredis sends it once and then
 * calls it by its digest (EVALSHA), loading it again after a Redis restart.
 */
export function defineScript(client: Redis, name: string, lua: string, keys = 1): RedisScript {
  client.defineCommand(name, { numberOfKeys: keys, lua });
  const command = (client as unknown as Record<string, RedisScript | undefined>)[name];
  if (!command) throw new Error(`the Redis script ${name} was not defined`);
  return command.bind(client);
}
