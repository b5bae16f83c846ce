import { Readable } from 'node:stream';
import { AwsChunkedDecoder } from '../../../shared/local/s3';

/** Feeds `input` to the decoder in pieces of `size` bytes and collects the output. */
async function decode(input: string, size: number): Promise<string> {
  const pieces: Buffer[] = [];
  const bytes = Buffer.from(input, 'latin1');
  for (let i = 0; i < bytes.length; i += size) pieces.push(bytes.subarray(i, i + size));
  const out: Buffer[] = [];
  for await (const chunk of Readable.from(pieces).pipe(new AwsChunkedDecoder())) out.push(chunk as Buffer);
  return Buffer.concat(out).toString('latin1');
}

describe('AwsChunkedDecoder', () => {
  const body = 'b\r\nstream-data\r\n5;chunk-signature=abc\r\nhello\r\n0\r\nx-amz-checksum-crc32:mfZ5bw==\r\n\r\n';

  it.each([1, 3, 7, 1000])('decodes chunk framing and drops the trailer (pieces of %i bytes)', async (size) => {
    // Act
    const decoded = await decode(body, size);
    // Assess
    expect(decoded).toBe('stream-datahello');
  });

  it('rejects a truncated body', async () => {
    // Act
    const decoding = decode('b\r\nstream', 4);
    // Assess
    await expect(decoding).rejects.toThrow('Truncated aws-chunked body');
  });
});
