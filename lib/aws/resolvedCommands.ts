import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * Sends a lib-dynamodb command through a middleware handler resolved once per client and command class,
 * instead of once per request.
 *
 * Why: `client.send(new PutCommand(input))` clones the client's middleware stack, concatenates the
 * command's, sorts it and builds every middleware's closure, for every request. On the dispatcher's hot
 * path (a claim and an outcome per notification) that was the largest single item of its CPU profile
 * (docs/benchmark.md, throughput). The SDK has the same cache built in (`cacheMiddleware: true`, handlers
 * per command class: aws/aws-sdk-js-v3#6423), but the document client refuses it: its commands' resolved
 * handler sends the command it was resolved for (`async () => handler(this.clientCommand)`), so a cached
 * one would send the first command's input every time.
 *
 * What this resolves is exactly what the document command resolves — its own marshalling middleware
 * (`addMarshallingMiddleware`, which marshals whatever input it is given), the client's stack, the
 * low-level command's — and the handler is then called with each request's own input. So the request on
 * the wire, the middleware every request runs through (command log, capacity meter) and the unmarshalled
 * output are those of `client.send`. Two guards keep it that way:
 * - the cache is per client (a WeakMap on the client: another client, another config, another handler);
 * - the client stack's middleware are compared with those the handler was resolved over on every send
 *   (a cheap walk of ~20 entries), so middleware added to or removed from the client later is honoured.
 * Like the SDK's own cache, requests of one class share the handler's execution context; for DynamoDB
 * it carries only per-client values (endpoint, signing scope, command name).
 */

type Handler = (args: { input: unknown }) => Promise<{ output: unknown }>;
type Middleware = unknown;

/** The parts of a lib-dynamodb command this uses (protected in its typings, public in its code). */
interface DocumentCommandInternals {
  middlewareStack: StackLike;
  clientCommand: {
    resolveMiddleware(stack: StackLike, config: unknown, options: undefined): Handler;
  };
  addMarshallingMiddleware(config: unknown): void;
}

interface StackLike {
  concat(from: StackLike): StackLike;
  applyToStack(to: unknown): unknown;
}

/** A lib-dynamodb command class (PutCommand, UpdateCommand, ...): its input, and its output as resolved. */
export type DocumentCommandClass<I, O> = new (
  input: I,
) => { resolveMiddleware(...args: never[]): (args: never) => Promise<{ output: O }> };

interface Resolved {
  handler: Handler;
  middleware: readonly Middleware[];
}

const resolvedByClient = new WeakMap<
  DynamoDBDocumentClient,
  Map<DocumentCommandClass<never, unknown>, Resolved>
>();

/** The client stack's middleware functions in order: a probe stack that only records what is added. */
const middlewareOf = (client: DynamoDBDocumentClient): Middleware[] => {
  const found: Middleware[] = [];
  const probe = {
    add: (middleware: Middleware) => found.push(middleware),
    addRelativeTo: (middleware: Middleware) => found.push(middleware),
    identifyOnResolve: () => false,
  };
  (client.middlewareStack as unknown as StackLike).applyToStack(probe);
  return found;
};

const sameMiddleware = (a: readonly Middleware[], b: readonly Middleware[]) =>
  a.length === b.length && a.every((m, i) => m === b[i]);

/** lib-dynamodb's `resolveMiddleware`, minus the wrapper that pins the handler to one command's input. */
const resolve = <I, O>(
  client: DynamoDBDocumentClient,
  Command: DocumentCommandClass<I, O>,
  input: I,
): Handler => {
  const template = new Command(input) as unknown as DocumentCommandInternals;
  template.addMarshallingMiddleware(client.config);
  const stack = (client.middlewareStack as unknown as StackLike).concat(template.middlewareStack);
  return template.clientCommand.resolveMiddleware(stack, client.config, undefined);
};

export const sendResolved = async <I, O>(
  client: DynamoDBDocumentClient,
  Command: DocumentCommandClass<I, O>,
  input: I,
): Promise<O> => {
  let byClass = resolvedByClient.get(client);
  if (!byClass) {
    byClass = new Map();
    resolvedByClient.set(client, byClass);
  }
  const middleware = middlewareOf(client);
  let resolved = byClass.get(Command as DocumentCommandClass<never, unknown>);
  if (!resolved || !sameMiddleware(resolved.middleware, middleware)) {
    resolved = { handler: resolve(client, Command, input), middleware };
    byClass.set(Command as DocumentCommandClass<never, unknown>, resolved);
  }
  const { output } = await resolved.handler({ input });
  return output as O;
};
