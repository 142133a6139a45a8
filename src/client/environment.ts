/**
 * The client's one read of its environment: the default bearer token. The client runs in other
 * processes (it is published on its own), so it does not use the service's configuration; where
 * there is no `process` (a browser) there is no default. No .env file is loaded.
 */
export function secretFromEnvironment(): string | undefined {
  if (typeof process === "undefined") return undefined;
  const secret = process.env?.AUTH_SECRET;
  return secret ? secret : undefined;
}
