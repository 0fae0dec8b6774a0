import * as z from 'zod/mini';
import { $ZodRealError } from 'zod/v4/core';
import './zodLocale.js';

/**
 * `schema.parse(value)` as classic zod threw it: an `Error` named `ZodError`, its message the issues as
 * JSON. zod/mini's own `parse` throws the core class, named `$ZodError`, and callers record a thrown
 * error's name (the archive backfill's drain report reads `<message id>: ZodError`; a failed `cdk synth`
 * prints it), so moving the schemas to mini would have renamed what an operator sees. Same issues, same
 * message; only the name is set back.
 *
 * The class is imported by name from zod/v4/core (the module zod/mini re-exports as `z.core`): a value
 * read through the `z.core` namespace makes esbuild keep that whole namespace, every locale and the
 * JSON Schema converters, about 390 KiB on every function's module path.
 */
export const parseOrThrow = <T extends z.core.$ZodType>(schema: T, value: unknown): z.output<T> => {
  const parsed = z.safeParse(schema, value);
  if (parsed.success) return parsed.data;
  const error = new $ZodRealError(parsed.error.issues);
  error.name = 'ZodError';
  throw error;
};
