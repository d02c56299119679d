import { type Logger, pino } from "pino";

/** Default logger for library code: callers (the CLI, tests) pass their own to see output. */
export const silentLogger: Logger = pino({ level: "silent" });
