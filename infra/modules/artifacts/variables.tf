variable "project_id" {
  type = string
}

variable "region" {
  type = string
}

variable "repository_id" {
  type    = string
  default = "core"
}

variable "bucket_name" {
  description = "Bucket for function source bundles."
  type        = string
}

variable "keep_images" {
  type    = number
  default = 20
}

variable "source_retention_days" {
  type    = number
  default = 90
}

# Member maps are keyed by static labels: for_each keys must be known at plan time.
variable "image_writers" {
  type    = map(string)
  default = {}
}

variable "source_writers" {
  type    = map(string)
  default = {}
}

variable "source_readers" {
  type    = map(string)
  default = {}
}
