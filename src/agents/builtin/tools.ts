import { tool } from "@langchain/core/tools";
import { z } from "zod";

export const addTool = tool(({ a, b }) => String(a + b), {
  name: "add",
  description: "Add two numbers and return the sum.",
  schema: z.object({ a: z.number().describe("first addend"), b: z.number().describe("second addend") }),
});

export const multiplyTool = tool(({ a, b }) => String(a * b), {
  name: "multiply",
  description: "Multiply two numbers and return the product.",
  schema: z.object({ a: z.number().describe("first factor"), b: z.number().describe("second factor") }),
});
