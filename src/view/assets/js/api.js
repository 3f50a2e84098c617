// api.js: the server's JSON API. A trace still being indexed answers 202: ask again until it
// is ready, saying so in the page's status line meanwhile.

export class ApiError extends Error {
  constructor(message, file, status) {
    super(message);
    this.file = file;
    this.status = status;
  }
}

const status = () => document.getElementById('status');

export async function get(path, params = {}) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) query.set(k, v);
  const url = '/api/' + path + (query.toString() ? '?' + query : '');
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(url);
    let body = null;
    try {
      body = await res.json();
    } catch (e) {
      throw new ApiError(`the server's answer to ${path} is not JSON (${res.status})`, '', res.status);
    }
    if (res.status === 202) {
      if (status()) status().textContent = `indexing ${body.file || ''}…`;
      await new Promise(r => setTimeout(r, Math.min(1000, 100 + attempt * 50)));
      continue;
    }
    if (status() && status().textContent.startsWith('indexing')) status().textContent = '';
    if (!res.ok) throw new ApiError(body.error || `HTTP ${res.status}`, body.file || '', res.status);
    return body;
  }
}
