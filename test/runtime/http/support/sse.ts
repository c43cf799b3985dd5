/**
 * A Server-Sent Events client on fetch for the HTTP suite: messages in order, and whether the
 * server ended the stream.
 */

/** One message: `id` (the sequence), `event` and the JSON of `data` (a read envelope). */
export interface SseMessage {
  id: string | null;
  event: string | null;
  data: { data: { id: string; state: string[]; output: unknown; isProcessing: boolean } };
}

/** An open stream, read in the background. */
export type OpenStream = Awaited<ReturnType<typeof openStream>>;

/** Opens a stream: resolves once the response headers arrived. */
export async function openStream(url: string, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: { accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  const messages: SseMessage[] = [];
  const waiters: Array<() => void> = [];
  let ended = false;
  const wake = () => waiters.splice(0).forEach((resolve) => resolve());
  void (async () => {
    if (response.body === null) return;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields = new Map<string, string>();
          for (const line of block.split('\n')) {
            const colon = line.indexOf(':');
            if (colon <= 0) continue;
            fields.set(line.slice(0, colon), line.slice(colon + 1).trimStart());
          }
          if (!fields.has('data')) continue;
          messages.push({
            id: fields.get('id') ?? null,
            event: fields.get('event') ?? null,
            data: JSON.parse(fields.get('data')!) as SseMessage['data'],
          });
          wake();
        }
      }
    } catch {
      // aborted
    }
    ended = true;
    wake();
  })();
  return {
    response,
    messages,
    get ended() {
      return ended;
    },
    /** Resolves once `count` messages arrived (or the stream ended). */
    async received(count: number): Promise<SseMessage[]> {
      while (messages.length < count && !ended) {
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
      return messages.slice(0, count);
    },
    async untilEnded(): Promise<void> {
      while (!ended) await new Promise<void>((resolve) => waiters.push(resolve));
    },
    close: () => controller.abort(),
  };
}
