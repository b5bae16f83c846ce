import * as z from 'zod/mini';
import { http } from '../../../shared/http/handler';
import { logger } from '../../../shared/logger';
import { apiEvent, lambdaContext, parsed } from '../../support/events';
import { op } from './stack';

describe('structured request logs', () => {
  it('log one JSON line per request with its id and status, never keys, bodies or secrets', async () => {
    // Prepare
    const lines: string[] = [];
    const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    logger.setLogLevel('INFO');
    const operation = { ...op({ method: 'POST' }), body: z.strictObject({ sip_password: z.string() }) };
    const handler = http(operation, ({ body }) => ({ ok: body.sip_password.length }));
    const event = apiEvent({
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'vap_abcdefgh_THE-SECRET-KEY-VALUE-123456', authorization: 'Bearer TOKEN-XYZ' },
      body: { sip_password: 'hunter2-SECRET' },
    });
    try {
      // Act
      const res = parsed(await handler(event, lambdaContext));
      // Assess
      expect(res.status).toBe(200);
    } finally {
      spy.mockRestore();
      logger.setLogLevel('SILENT');
    }
    const json = lines.join('').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(json).toEqual([expect.objectContaining({ level: 'INFO', message: 'request', request_id: 'req-test-1', status: 200, operation: 'test' })]);
    const all = lines.join('');
    for (const secret of ['THE-SECRET-KEY', 'hunter2', 'TOKEN-XYZ']) expect(all).not.toContain(secret);
  });
});
