/**
 * The Redis every test uses: TEST_REDIS_URL, else the local one (DEVELOPERS.md, "Local services").
 * Tests keep to key prefixes of their own; tests that stop Redis start a private redis-server instead.
 */
export const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
