import { ServiceError } from "../errors/service-error.ts";
import type { Principal } from "./principal.ts";

/** Who may use one agent: any user listed, or any caller whose token carries one of the roles. */
export interface AgentRule {
  readonly users: readonly string[];
  readonly roles: readonly string[];
}

/**
 * Per-agent access (AGENT_ACCESS): an agent with a rule may be used only by the users it lists and
 * the callers whose token carries one of its roles (a JWT's AUTH_JWT_ROLES_CLAIM); an agent without
 * one is open to every caller. The built-in agents follow the same rule. A trusted shared-secret
 * caller (AUTH_MODE=trusted), which acts for the users it names, and the open development mode use
 * every agent: the backend in front decides for its users. A refusal is 403 agent_forbidden on
 * every route that uses the agent; /info and assistant search leave it out.
 */
export class AgentAccess {
  private readonly rules: ReadonlyMap<string, { users: ReadonlySet<string>; roles: ReadonlySet<string> }>;

  constructor(
    rules: Readonly<Record<string, AgentRule>>,
    /** Told of each refusal (a counter). */
    private readonly onRefused: () => void = () => {},
  ) {
    this.rules = new Map(Object.entries(rules).map(([agent, rule]) => [agent, { users: new Set(rule.users), roles: new Set(rule.roles) }]));
  }

  /** Whether `principal` may use the agent named `agent`. */
  allows(principal: Principal, agent: string): boolean {
    const rule = this.rules.get(agent);
    if (!rule || principal.kind === "development" || principal.boundUserId === undefined) return true;
    if (rule.users.has(principal.boundUserId)) return true;
    for (const role of principal.roles ?? []) if (rule.roles.has(role)) return true;
    return false;
  }

  /** Refuse (403 agent_forbidden) a principal that may not use the agent. */
  check(principal: Principal, agent: string): void {
    if (this.rules.size === 0 || this.allows(principal, agent)) return;
    this.onRefused();
    throw new ServiceError("agent_forbidden", { detail: `This caller may not use the agent "${agent}".` });
  }
}

/** No rules: every agent open to every caller. */
export const OPEN_ACCESS = new AgentAccess({});
