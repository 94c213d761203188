// An object standing for one that a suite makes in its `before` hook, so that the suite can hold it
// in a const from the start: every property read or write goes to the instance of the moment, and
// methods are bound to it.

export function forwardTo<T extends object>(current: () => T | undefined, what: string): T {
  const instance = (): T => {
    const value = current();
    if (value === undefined) throw new Error(`${what} is used before the before hook that makes it has run`);
    return value;
  };
  return new Proxy({} as T, {
    get(_, key) {
      // `await` and inspection probe these on any object: before the hook, answer as a plain object would.
      if (current() === undefined && (key === 'then' || typeof key === 'symbol')) return undefined;
      const target = instance();
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
    set: (_, key, value) => Reflect.set(instance(), key, value),
    has: (_, key) => Reflect.has(instance(), key),
  });
}
