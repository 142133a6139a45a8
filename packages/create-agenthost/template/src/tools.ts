// Tools the assistant may call. A tool is a function with a name, a description and an input schema:
// the model reads the description and the schema to decide when to call it and with what.
import { tool } from "@langchain/core/tools";
import { z } from "zod";

/** The date and time now, as YYYY-MM-DD HH:MM in the time zone named (a model cannot know it). */
export const currentTime = tool(
  ({ time_zone }) => {
    let parts: Intl.DateTimeFormatPart[];
    try {
      const format = new Intl.DateTimeFormat("en-US", { timeZone: time_zone, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
      parts = format.formatToParts(new Date());
    } catch {
      // Words the model can act on, rather than an error that ends the run.
      return `Unknown time zone "${time_zone}": use an IANA name such as Europe/Paris, America/New_York or UTC.`;
    }
    const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? "";
    return `${part("year")}-${part("month")}-${part("day")} ${part("hour")}:${part("minute")} in ${time_zone}`;
  },
  {
    name: "current_time",
    description: "The current date and time in a time zone.",
    schema: z.object({
      time_zone: z.string().describe("An IANA time zone name, such as Europe/Paris or Asia/Tokyo; UTC for universal time"),
    }),
  },
);
