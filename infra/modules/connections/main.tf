# The database connection budget, in one place (envs/dev fills it; docs/capacity.md explains it).
# Each unit that talks to Cloud SQL opens at most max_instances × processes × pool connections;
# the worst case is every unit at its instance limit at once. Direct, that sum plus the reserve
# must fit under max_connections. With Cloud SQL's managed connection pooling the units' clients
# connect to the poolers instead, and the server connections are bounded by the pools: each
# pooler (one per 4 vCPUs of the tier, at least one) keeps a pool of up to max_pool_size server
# connections per database and user, and every unit logs in as its own user. This module has no
# resources: its outputs carry the numbers to the services and the database, and their
# preconditions refuse a plan whose budget does not fit.

locals {
  clients = { for unit, u in var.units : unit => u.max_instances * u.processes * u.pool }
  # Connections the units can open at once, all at their instance limits.
  client_connections = sum(values(local.clients))

  # db-custom-<vCPUs>-<MB> (Enterprise) or db-perf-optimized-N-<vCPUs> (Enterprise Plus).
  vcpus   = tonumber(regex("^db-(?:custom-|perf-optimized-N-)(\\d+)", var.tier)[0])
  poolers = max(1, floor(local.vcpus / 4))
  # What reaches PostgreSQL: the clients themselves, or the poolers' pools, one per unit's user.
  server_connections = var.pooling.enabled ? local.poolers * length(var.units) * var.pooling.max_pool_size : local.client_connections
}

output "units" {
  description = "Per unit: max_instances and pool (DB_POOL_MAX per process), for the services."
  value       = var.units
}

output "max_connections" {
  description = "The database's max_connections flag."
  value       = var.max_connections

  precondition {
    condition     = local.server_connections + var.reserve <= var.max_connections
    error_message = "Connection budget: ${local.server_connections} server connections (${jsonencode(local.clients)}${var.pooling.enabled ? ", pooled" : ""}) plus the reserve of ${var.reserve} exceed max_connections ${var.max_connections}: lower instance limits or pools, raise max_connections with the tier, or enable pooling."
  }
}

output "pooling" {
  description = "Managed connection pooling for the database: enabled, pool size per pooler, database and user."
  value       = var.pooling

  precondition {
    # Managed connection pooling exists on Enterprise Plus only (db-perf-optimized-N-* tiers).
    condition     = !var.pooling.enabled || startswith(var.tier, "db-perf-optimized-N-")
    error_message = "Managed connection pooling needs a Cloud SQL Enterprise Plus tier (db-perf-optimized-N-*), not ${var.tier}."
  }
}

output "connections" {
  description = "The worst case: client connections per unit and in all, and server connections."
  value = {
    clients            = local.clients
    client_connections = local.client_connections
    server_connections = local.server_connections
    reserve            = var.reserve
  }
}
