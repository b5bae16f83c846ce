// Minimal types for s3rver 3.7 (it ships none): only what shared/local/s3.ts uses.
declare module 's3rver' {
  import type { AddressInfo } from 'node:net';
  import type { IncomingMessage } from 'node:http';

  interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory?: string;
    resetOnClose?: boolean;
    allowMismatchedSignatures?: boolean;
    vhostBuckets?: boolean;
    configureBuckets?: { name: string; configs?: (string | Buffer)[] }[];
  }

  /** The Koa context, as far as our middleware touches it. */
  interface KoaContext {
    req: NodeJS.ReadableStream & Partial<IncomingMessage>;
    get(header: string): string;
  }

  class S3rver {
    constructor(options?: S3rverOptions);
    /** Koa's middleware list: composed when the server starts listening. */
    middleware: ((ctx: KoaContext, next: () => Promise<void>) => Promise<void>)[];
    run(): Promise<AddressInfo>;
    close(): Promise<void>;
  }
  export = S3rver;
}

declare module 's3rver/lib/models/account' {
  interface AWSAccount {
    id: number;
    displayName: string;
  }
  const AWSAccountModule: {
    registry: Map<string, AWSAccount>;
    DUMMY_ACCOUNT: AWSAccount;
  };
  export = AWSAccountModule;
}
