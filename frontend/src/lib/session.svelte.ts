// Who is using the app. On start the app asks GET /api/auth/me: 200 says who (auth_enabled false:
// no users exist and the local user is the admin); 401 means log in. Any later 401 (the session
// ended, or was ended by a logout elsewhere) brings the login page back.
import { ApiError, authApi, errorMessage, setUnauthorizedHandler, type Me, type Role } from './api';

class Session {
  /** The caller, once known. */
  me = $state<Me | null>(null);
  /** True when the server wants a login (a 401). */
  needLogin = $state(false);
  /** An error other than 401 from /api/auth/me (the server could not be reached). */
  error = $state('');
  /** Counts logins, so pages mount afresh for the user who just logged in. */
  logins = $state(0);

  constructor() {
    setUnauthorizedHandler(() => {
      this.needLogin = true;
    });
  }

  async load(): Promise<void> {
    this.error = '';
    try {
      this.me = await authApi.me();
      this.needLogin = false;
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        this.me = null;
        this.needLogin = true;
      } else {
        this.error = errorMessage(err);
      }
    }
  }

  /** login throws an ApiError (bad_credentials, too_many_attempts, …) for the page to show. */
  async login(username: string, password: string): Promise<void> {
    this.me = await authApi.login(username, password);
    this.logins++;
    this.needLogin = false;
  }

  async logout(): Promise<void> {
    try {
      await authApi.logout();
    } finally {
      this.me = null;
      this.needLogin = true;
    }
  }

  /** can reports whether the caller's role includes min (viewer < tester < admin). */
  can(min: Role): boolean {
    return roleAllows(this.me?.role, min);
  }
}

const RANK: Record<Role, number> = { viewer: 1, tester: 2, admin: 3 };

export function roleAllows(role: Role | undefined | null, min: Role): boolean {
  return !!role && (RANK[role] ?? 0) >= RANK[min];
}

export const session = new Session();
