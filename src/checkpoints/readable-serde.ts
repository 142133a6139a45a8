import { JsonPlusSerializer, type SerializerProtocol } from "@langchain/langgraph-checkpoint";

/**
 * Stored checkpoint data that cannot be turned back into values: LangChain's deserializer refused
 * it (nesting deeper than it allows, an unknown class), or the text is not JSON at all. It is not a
 * database failure and not a bug in the request that met it: the conversation needs clearing.
 */
export class UnreadableCheckpointError extends Error {
  constructor(cause: unknown) {
    super("stored checkpoint data could not be read back", { cause });
    this.name = "UnreadableCheckpointError";
  }
}

/**
 * The savers' serializer, with every load failure reported as UnreadableCheckpointError so the
 * service can tell "this conversation is unreadable" from every other failure. Writing is
 * unchanged: the stored bytes are exactly what the saver would have stored without it.
 */
export class ReadableSerde implements SerializerProtocol {
  constructor(private readonly inner: SerializerProtocol = new JsonPlusSerializer()) {}

  dumpsTyped(data: unknown): Promise<[string, Uint8Array]> {
    return this.inner.dumpsTyped(data);
  }

  async loadsTyped(type: string, data: Uint8Array | string): Promise<unknown> {
    try {
      return await this.inner.loadsTyped(type, data);
    } catch (error) {
      throw new UnreadableCheckpointError(error);
    }
  }
}
