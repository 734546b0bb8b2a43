// Hash routing: #/plans, #/plans/new, #/plans/:id, #/runs, #/runs/:id, #/compare?ids=1,2&baseline=1,
// #/tokens, #/users, #/audit?offset=50, #/secrets, #/agents
// (a query string after the path is allowed, e.g. #/runs?plan_id=3). Any server path can serve index.html.

export type Route =
  | { name: 'plans' }
  | { name: 'plan-new' }
  | { name: 'plan-edit'; id: string }
  | { name: 'runs'; query: URLSearchParams }
  | { name: 'run'; id: string }
  | { name: 'compare'; query: URLSearchParams }
  | { name: 'tokens' }
  | { name: 'users' }
  | { name: 'audit'; query: URLSearchParams }
  | { name: 'secrets' }
  | { name: 'agents' }
  | { name: 'not-found'; path: string };

/** parseHash maps a location.hash to a route. An empty hash is the plans page. */
export function parseHash(hash: string): Route {
  let h = hash.replace(/^#/, '');
  if (h === '' || h === '/') return { name: 'plans' };
  const q = h.indexOf('?');
  const query = new URLSearchParams(q >= 0 ? h.slice(q + 1) : '');
  if (q >= 0) h = h.slice(0, q);
  const parts = h.split('/').filter(Boolean);
  if (parts[0] === 'plans') {
    if (parts.length === 1) return { name: 'plans' };
    if (parts.length === 2 && parts[1] === 'new') return { name: 'plan-new' };
    if (parts.length === 2 && /^\d+$/.test(parts[1])) return { name: 'plan-edit', id: parts[1] };
  }
  if (parts[0] === 'runs') {
    if (parts.length === 1) return { name: 'runs', query };
    if (parts.length === 2 && /^\d+$/.test(parts[1])) return { name: 'run', id: parts[1] };
  }
  if (parts[0] === 'compare' && parts.length === 1) return { name: 'compare', query };
  if (parts.length === 1 && (parts[0] === 'tokens' || parts[0] === 'users')) return { name: parts[0] };
  if (parts[0] === 'audit' && parts.length === 1) return { name: 'audit', query };
  if (parts[0] === 'secrets' && parts.length === 1) return { name: 'secrets' };
  if (parts[0] === 'agents' && parts.length === 1) return { name: 'agents' };
  return { name: 'not-found', path: h };
}

/**
 * A LeaveGuard is asked before the route changes (a link, navigate, a typed URL, Back): it returns
 * true to hold the page (the URL is put back), e.g. to ask about unsaved changes first; it is given
 * the hash the user was going to (to go there later with `leave`).
 */
export type LeaveGuard = (to: string) => boolean;

class Router {
  route = $state<Route>(parseHash(typeof location === 'undefined' ? '' : location.hash));
  guard: LeaveGuard | null = null;
  private hash = typeof location === 'undefined' ? '' : location.hash;

  constructor() {
    if (typeof window !== 'undefined') {
      window.addEventListener('hashchange', () => {
        const to = location.hash;
        if (this.guard && to !== this.hash && this.guard(to)) {
          history.replaceState(history.state, '', this.hash || '#/');
          return;
        }
        this.hash = to;
        this.route = parseHash(to);
      });
    }
  }
}

export const router = new Router();

/** setLeaveGuard installs guard (null removes it); it returns a function that removes it if still installed. */
export function setLeaveGuard(guard: LeaveGuard | null): () => void {
  router.guard = guard;
  return () => {
    if (router.guard === guard) router.guard = null;
  };
}

/** leave removes the guard and goes to `to` (a hash a guard was given). */
export function leave(to: string): void {
  router.guard = null;
  navigate(to);
}

/** navigate changes the hash (adding a history entry); the hashchange listener updates the route. */
export function navigate(path: string): void {
  const target = path.startsWith('#') ? path : `#${path}`;
  if (location.hash === target) return;
  location.hash = target;
}
