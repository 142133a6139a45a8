import { z } from "zod";

/**
 * The contract's named types (ChatMessage, InvokeRequest, ...): each schema registered here is
 * referred to by its name wherever it appears, so a generated reference (the OpenAPI document's
 * components) lists it once.
 */
export const namedSchemas = z.registry<{ id: string }>();
