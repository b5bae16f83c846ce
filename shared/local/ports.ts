import { createServer } from 'node:net';

/** A TCP port free right now on 127.0.0.1 (for servers that cannot listen on port 0 themselves). */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/** A port the local runtime listens on, with the setting that chose it (named when it is taken). */
export interface WantedPort {
  port: number;
  host: string;
  setting: string;
}

/** Thrown when a port the runtime needs is in use; the message names the setting that picks another. */
export class PortTakenError extends Error {
  constructor(readonly wanted: WantedPort, cause?: unknown) {
    super(
      `Port ${wanted.port} (${wanted.setting}) is already in use on ${wanted.host}: another program, or another npm start, listens there.\n` +
        `Stop it, or choose another port, e.g. ${wanted.setting}=${wanted.port + 1} npm start.`,
      { cause },
    );
    this.name = 'PortTakenError';
  }
}

/**
 * Checks, by listening for a moment, that each port is free, so a clash is reported before
 * anything slow (Java) starts. The servers still listen later; a port taken in between fails
 * there with the same error (see `listenError`).
 */
export async function assertPortsFree(wanted: WantedPort[]): Promise<void> {
  for (const want of wanted) {
    if (!want.port) continue;
    await new Promise<void>((resolvePort, reject) => {
      const server = createServer();
      server.unref();
      server.once('error', (err: NodeJS.ErrnoException) => reject(listenError(err, want)));
      server.listen(want.port, want.host, () => server.close(() => resolvePort()));
    });
  }
}

/** A listen failure as the user should read it: EADDRINUSE names the setting; EACCES says why. */
export function listenError(err: NodeJS.ErrnoException, wanted: WantedPort): Error {
  if (err.code === 'EADDRINUSE') return new PortTakenError(wanted, err);
  if (err.code === 'EACCES') {
    return new Error(`Port ${wanted.port} (${wanted.setting}) may not be opened by this user on ${wanted.host} (ports below 1024 need privileges): choose another, e.g. ${wanted.setting}=3000.`, { cause: err });
  }
  return err;
}
