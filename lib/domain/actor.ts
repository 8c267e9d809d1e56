// Who a data-layer call acts for. Every repository query is scoped by it: a user sees only
// their own rows (others answer as missing), a service (userId null) acts on any user's rows.
export interface Actor {
  userId: string | null;
}

export const SERVICE: Actor = { userId: null };
