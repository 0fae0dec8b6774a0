/**
 * aws-local-stepfunctions 3.0.0 calls Promise.withResolvers (Node 22+); on Node 20 it is polyfilled here,
 * before the package is imported (TOOLCHAIN.md). Import this module first.
 */
const P = Promise as unknown as { withResolvers?: () => unknown };
if (typeof P.withResolvers !== 'function') {
  P.withResolvers = function withResolvers<T>(this: PromiseConstructor) {
    let resolve!: (value: T | PromiseLike<T>) => void;
    let reject!: (reason?: unknown) => void;
    const promise = new this<T>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}

export {};
