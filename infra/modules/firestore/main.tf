# Firestore (native mode) holds the live service's cross-instance coordination: one document
# per live instance (its liveness and connections, renewed by its heartbeat; lib/fanout/liveness.ts)
# and a lease document per take (owner and epoch; lib/adapters/coordination.ts). Both expire; the
# TTL policy deletes expired documents (lazily, usually within a day), so readers still compare
# expires_at with the clock and treat an expired document as absent.

resource "google_firestore_database" "this" {
  project                 = var.project_id
  name                    = "(default)"
  location_id             = var.location_id
  type                    = "FIRESTORE_NATIVE"
  concurrency_mode        = "PESSIMISTIC" # lease takeover uses transactions
  delete_protection_state = var.delete_protection ? "DELETE_PROTECTION_ENABLED" : "DELETE_PROTECTION_DISABLED"
  deletion_policy         = var.delete_protection ? "ABANDON" : "DELETE"
}

resource "google_firestore_field" "ttl" {
  for_each = toset(var.ttl_collections)

  project    = var.project_id
  database   = google_firestore_database.this.name
  collection = each.value
  field      = var.ttl_field

  ttl_config {}
  # index_config is left out on purpose: the field keeps its inherited single-field
  # indexes, which the count of unexpired connections uses.
}

# The routing lookup (presenceInstances, countPresence): the live instances holding a user's
# connections, in one query (users array-contains, expires_at >).
resource "google_firestore_index" "instances_by_user" {
  project    = var.project_id
  database   = google_firestore_database.this.name
  collection = var.instances_collection

  fields {
    field_path   = "users"
    array_config = "CONTAINS"
  }
  fields {
    field_path = "expires_at"
    order      = "ASCENDING"
  }
}
