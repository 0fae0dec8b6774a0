// The API client and sign-in. The bearer token lives in sessionStorage for this tab only and is sent in
// the Authorization header; there are no cookies.
import { $, el } from './dom.js';

export const session = { apiBase: '', token: '', role: 'viewer', id: '' };

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

export const api = async (path, options = {}) => {
  const response = await fetch(`${session.apiBase}${path}`, {
    method: options.method ?? 'GET',
    headers: {
      authorization: `Bearer ${session.token}`,
      ...(options.body ? { 'content-type': 'application/json' } : {}),
    },
    ...(options.body ? { body: JSON.stringify(options.body) } : {}),
    credentials: 'omit',
    cache: 'no-store',
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
};

/** A token in the URL fragment (the local console's URL, or Cognito's hosted UI), moved to sessionStorage. */
export const readToken = (config) => {
  const fragment = new URLSearchParams(window.location.hash.slice(1));
  const fromFragment = fragment.get('token') ?? fragment.get('access_token');
  if (fromFragment) {
    sessionStorage.setItem('sendproof-token', fromFragment);
    history.replaceState(null, '', `${window.location.pathname}${window.location.search}`);
  }
  const token = sessionStorage.getItem('sendproof-token');
  if (token) return token;
  const signin = $('signin');
  signin.hidden = false;
  if (config.cognito) {
    const url = new URL(`https://${config.cognito.domain}/oauth2/authorize`);
    url.searchParams.set('client_id', config.cognito.clientId);
    url.searchParams.set('response_type', 'token');
    url.searchParams.set('scope', 'openid');
    url.searchParams.set('redirect_uri', `${window.location.origin}/`);
    signin.append(el('a', { href: url.toString(), text: 'Sign in' }));
  } else {
    signin.textContent =
      'Open the console with the URL `sendproof console` printed (it carries the token after #).';
  }
  return '';
};
