/**
 * A schema built on its first use, then kept. zod builds a schema's whole tree where it is declared, and
 * a module's declarations run at every cold start (bench/coldStart.ts): a schema that only some
 * configurations parse (custom purposes, a rate-limit or circuit setting) or only a failure path needs
 * is declared through this, so a function whose configuration never parses it never builds it.
 */
export const lazySchema = <T>(name: string, build: () => T): (() => T) => {
  let schema: T | undefined;
  return () => {
    if (schema === undefined) {
      schema = build();
      built.add(name);
    }
    return schema;
  };
};

const built = new Set<string>();

/** The names of the lazy schemas this process has built so far (tests and diagnostics). */
export const builtSchemas = (): readonly string[] => [...built];
