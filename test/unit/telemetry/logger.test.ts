/**
 * The logger as a bundle runs it (shared/logger.ts): Powertools Logger is still loading when the
 * module is imported, lines logged meanwhile wait in order, and `logsWritten()` resolves once they
 * are written. Unbundled it is there at once.
 */
type LoggerModule = typeof import('../../../shared/logger');

function fresh(lazy: boolean): LoggerModule {
  const before = process.env.VAP_LAZY_MODULES;
  if (lazy) process.env.VAP_LAZY_MODULES = 'true';
  else delete process.env.VAP_LAZY_MODULES;
  let loaded!: LoggerModule;
  try {
    jest.isolateModules(() => {
      loaded = require('../../../shared/logger') as LoggerModule;
    });
  } finally {
    if (before === undefined) delete process.env.VAP_LAZY_MODULES;
    else process.env.VAP_LAZY_MODULES = before;
  }
  return loaded;
}

let written: string[];
const level = process.env.LOG_LEVEL;
beforeEach(() => {
  process.env.LOG_LEVEL = 'INFO'; // the tests' setup silences the log (test/support/setup-env.js); read when Powertools loads
  written = [];
  // Powertools writes INFO to stdout, WARN and ERROR to stderr.
  for (const stream of [process.stdout, process.stderr]) {
    jest.spyOn(stream, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
  }
});
afterEach(() => {
  jest.restoreAllMocks();
  process.env.LOG_LEVEL = level;
});
const lines = () => written.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);

it('bundled: lines logged while Powertools loads wait, in order, and are written before logsWritten() resolves', async () => {
  const { logger, logsWritten } = fresh(true);
  logger.info('first', { n: 1 });
  logger.warn('second', { n: 2 });
  logger.error('third', { error: new Error('boom') });
  expect(written).toEqual([]); // not there yet: nothing written, nothing lost
  await logsWritten();
  expect(lines().map((l) => [l.level, l.message, l.n])).toEqual([['INFO', 'first', 1], ['WARN', 'second', 2], ['ERROR', 'third', undefined]]);
  expect(lines()[2]!.error).toMatchObject({ message: 'boom' });
  // Loaded now: a line is written at once.
  logger.info('fourth');
  expect(lines().at(-1)).toMatchObject({ message: 'fourth' });
});

it('bundled: a level set before the logger arrives applies to the lines that waited', async () => {
  const { logger, logsWritten } = fresh(true);
  logger.setLogLevel('SILENT');
  logger.error('unheard');
  await logsWritten();
  logger.error('unheard either');
  expect(written).toEqual([]);
});

it('unbundled: the logger is there at once', async () => {
  const { logger, logsWritten } = fresh(false);
  logger.info('at once');
  expect(lines()).toEqual([expect.objectContaining({ level: 'INFO', message: 'at once' })]);
  await expect(logsWritten()).resolves.toBeUndefined();
});

it('bundled: a logger chunk that fails to load loses no line: the waiting ones and the later ones go to the console', async () => {
  jest.doMock('../../../shared/powertools-logger', () => {
    throw new Error('chunk missing');
  });
  const printed: unknown[][] = [];
  for (const level of ['info', 'warn', 'error'] as const) jest.spyOn(console, level).mockImplementation((...args: unknown[]) => void printed.push([level, ...args]));
  try {
    const { logger, logsWritten } = fresh(true);
    logger.warn('before', { n: 1 });
    await logsWritten();
    logger.info('after');
    expect(printed).toEqual([['warn', 'before', { n: 1 }], ['error', 'Powertools Logger did not load', expect.any(Error)], ['info', 'after']]);
  } finally {
    jest.dontMock('../../../shared/powertools-logger');
  }
});
