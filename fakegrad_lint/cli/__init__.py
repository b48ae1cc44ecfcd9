"""Front ends: arguments -> settings -> engine -> report."""
