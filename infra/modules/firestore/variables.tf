variable "project_id" {
  type = string
}

variable "location_id" {
  description = "Firestore location, e.g. the services' region or a multi-region (eur3, nam5)."
  type        = string
}

# TTL policies name collection groups (the last path segment), wherever the collection sits.
# lib/adapters/coordination.ts writes leases to `<prefix>leases` (the live service's prefix is `live_`),
# lib/fanout/liveness.ts each live instance's document (liveness, connections) to `<prefix>instances`.
variable "ttl_collections" {
  description = "Collection groups whose documents expire at var.ttl_field."
  type        = list(string)
  default     = ["live_leases", "live_instances"]
}

variable "instances_collection" {
  description = "The live instances' collection, queried by user (its composite index)."
  type        = string
  default     = "live_instances"
}

variable "ttl_field" {
  type    = string
  default = "expires_at"
}

variable "delete_protection" {
  type    = bool
  default = true
}
