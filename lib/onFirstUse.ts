/**
 * A value built on its first use and kept, for what only some requests or a later phase need (an SDK
 * client, a route's dependencies) loaded with a dynamic `import()`: scripts/lambdaBundle.mjs puts such a
 * module in its own chunk, which only the process that takes that path reads (bench/coldStart.ts counts
 * the module path). A failed build is not kept: its caller sees the error, and the next use tries again.
 */
export const onFirstUse = <T>(build: () => Promise<T>): (() => Promise<T>) => {
  let value: Promise<T> | undefined;
  return () =>
    (value ??= build().catch((error: unknown) => {
      value = undefined;
      throw error;
    }));
};
