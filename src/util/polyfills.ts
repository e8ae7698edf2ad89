/**
 * `Promise.withResolvers` for Node 20: `@workflow/core` uses it (a Node 22 API), while this
 * library supports Node >= 20. Installing it is a no-op where the runtime already has it.
 */
export function installPromiseWithResolvers(): void {
  const P = Promise as unknown as { withResolvers?: unknown };
  if (typeof P.withResolvers === 'function') return;
  P.withResolvers = <T>() => {
    let resolve!: (v: T) => void;
    let reject!: (e: unknown) => void;
    const promise = new Promise<T>((a, b) => {
      resolve = a;
      reject = b;
    });
    return { promise, resolve, reject };
  };
}
