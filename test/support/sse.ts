/**
 * Reads a server-sent event stream as it arrives (the WHATWG format: `event:` and `data:` lines,
 * a blank line ending each event), for tests that check what a client sees and when.
 */
export interface SseEvent {
  event: string;
  /** The `data:` lines joined, parsed as JSON when they are JSON (`[DONE]` stays text). */
  data: any;
}

export async function* readSse(response: Response): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let name = 'message';
  let data: string[] = [];
  const flush = (): SseEvent | undefined => {
    if (!data.length) return undefined;
    const text = data.join('\n');
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: kept as text
    }
    const out = { event: name, data: parsed };
    name = 'message';
    data = [];
    return out;
  };
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, '');
      buffer = buffer.slice(nl + 1);
      if (line === '') {
        const e = flush();
        if (e) yield e;
      } else if (line.startsWith('event:')) name = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
  }
  const e = flush();
  if (e) yield e;
}

/** Every event of a stream. */
export async function allSse(response: Response): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const e of readSse(response)) out.push(e);
  return out;
}
