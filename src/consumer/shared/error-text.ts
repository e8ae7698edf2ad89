/**
 * An error as text for a log line of the receive side (never for a decision: what an error means
 * is read from its name or code, src/aws/sdk-errors.ts and ../delivery/net-errors.ts).
 */

/** `Name: message`, for a line that names what failed. */
export function describeError(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** The stack when there is one, for a line an operator debugs from (the flow route's). */
export function describeWithStack(err: unknown): string {
  return err instanceof Error ? (err.stack ?? `${err.name}: ${err.message}`) : String(err);
}
