variable "project_id" {
  type = string
}

variable "location_id" {
  description = "Firestore location, e.g. the services' region or a multi-region (eur3, nam5)."
  type        = string
}

# TTL policies name collection groups (the last path segment), wherever the collection sits.
# lib/adapters/coordination.ts writes leases to `<prefix>leases` (the live service's prefix is `live_`)
# and each connection to `<prefix>presence/{user}/presence_connections/{connection}`, and each
# live instance's mark to `<prefix>instances`.
variable "ttl_collections" {
  description = "Collection groups whose documents expire at var.ttl_field."
  type        = list(string)
  default     = ["live_leases", "presence_connections", "live_instances"]
}

variable "ttl_field" {
  type    = string
  default = "expires_at"
}

variable "delete_protection" {
  type    = bool
  default = true
}
