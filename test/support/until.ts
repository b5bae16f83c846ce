/** Polls `read` until `done` holds (or 30 s pass, which fails the test with the last value read). */
export async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what} never happened: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
