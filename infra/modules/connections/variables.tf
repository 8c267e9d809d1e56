variable "units" {
  description = "Per unit that connects to the database (api, sweep, live): its instance limit, Node processes per instance (the live service's LIVE_WORKERS) and pool per process (DB_POOL_MAX)."
  type = map(object({
    max_instances = number
    processes     = number
    pool          = number
  }))
}

variable "tier" {
  description = "The Cloud SQL tier (its vCPUs size the managed pooler count)."
  type        = string
}

variable "max_connections" {
  description = "The database's max_connections flag. Cloud SQL's default is by memory; 1,000 is the default of the largest tiers."
  type        = number
}

variable "reserve" {
  # 3: PostgreSQL's superuser_reserved_connections (Cloud SQL keeps them for its own agents);
  # 2: the migration step (npm run db:apply, one connection, plus a retry overlapping it);
  # 5: operators (psql through the Auth Proxy, Query Insights, an export).
  description = "Connections kept free of the units' worst case, for administration."
  type        = number
  default     = 10
}

variable "pooling" {
  description = "Cloud SQL managed connection pooling (Enterprise Plus): on, and each pooler's max_pool_size per database and user."
  type = object({
    enabled       = bool
    max_pool_size = number
  })
  default = { enabled = false, max_pool_size = 10 }
}
