// Node --import preload for the bench: send the official server's Brave API requests to the local fake.
//
// The official server (2.1.4) calls the global fetch (Node's built-in undici) with absolute
// https://api.search.brave.com/... URLs and has no base-URL setting. This preload wraps
// globalThis.fetch so that origin becomes BENCH_BRAVE_ORIGIN (http://127.0.0.1:PORT, loopback
// only); path, query, headers and body pass through unchanged. Any other origin is refused, so a
// request that would leave the machine fails loudly instead of reaching the real API.
const BRAVE_ORIGIN = 'https://api.search.brave.com';
const target = process.env.BENCH_BRAVE_ORIGIN ?? '';

if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(target)) {
  process.stderr.write(`redirect-fetch: BENCH_BRAVE_ORIGIN must be http://127.0.0.1:PORT, not '${target}'\n`);
  process.exit(2);
}

const originalFetch = globalThis.fetch;

function rewrite(url) {
  if (url.startsWith(BRAVE_ORIGIN + '/')) {
    return target + url.slice(BRAVE_ORIGIN.length);
  }
  if (url.startsWith(target + '/')) {
    return url;
  }
  throw new Error(`redirect-fetch: refusing a request outside the bench: ${url}`);
}

globalThis.fetch = function redirectedFetch(input, init) {
  if (typeof input === 'string') {
    return originalFetch(rewrite(input), init);
  }
  if (input instanceof URL) {
    return originalFetch(rewrite(input.href), init);
  }
  if (input instanceof Request) {
    return originalFetch(new Request(rewrite(input.url), input), init);
  }
  return originalFetch(input, init);
};
