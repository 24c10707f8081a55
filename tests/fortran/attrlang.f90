! Attributes across languages (MPI-4.0 19.3.7), with attrlang_c.c: a value
! Fortran sets (MPI_COMM_SET_ATTR, MPI_ATTR_PUT) is read in C as a pointer
! to it, on the communicator and on its duplicate (Fortran's copy
! callback); a pointer C sets is read in Fortran as the pointer's value;
! Fortran reads its own values back, and its delete callback sees them.
! Prints PASS attrlang.

module attrlang_callbacks
  implicit none
  integer :: deleted = 0
contains
  subroutine copy_plus_one(oldcomm, keyval, extra, val_in, val_out, flag, ierr)
    use mpi
    integer :: oldcomm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: extra, val_in, val_out
    logical :: flag
    val_out = val_in + 1
    flag = .true.
    ierr = MPI_SUCCESS
  end subroutine copy_plus_one

  subroutine count_delete(comm, keyval, val, extra, ierr)
    use mpi
    integer :: comm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: val, extra
    if (val == 12346) deleted = deleted + 1
    ierr = MPI_SUCCESS
  end subroutine count_delete
end module attrlang_callbacks

program attrlang
  use mpi
  use attrlang_callbacks
  implicit none
  integer :: ierr, rank, errs, total, key, ckey, key1, dup, ok, v4
  integer(kind=MPI_ADDRESS_KIND) :: val, extra, addr
  logical :: flag

  errs = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  extra = 0
  call MPI_Comm_create_keyval(copy_plus_one, count_delete, key, extra, ierr)
  call MPI_Comm_set_attr(MPI_COMM_WORLD, key, 12345_MPI_ADDRESS_KIND, ierr)
  call c_read_attr(MPI_COMM_WORLD, key, 12345_MPI_ADDRESS_KIND, ok)
  if (ok /= 1) errs = errs + 1
  call MPI_Comm_get_attr(MPI_COMM_WORLD, key, val, flag, ierr)
  if (.not. flag .or. val /= 12345) errs = errs + 1

  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call c_read_attr(dup, key, 12346_MPI_ADDRESS_KIND, ok)
  if (ok /= 1) errs = errs + 1
  call MPI_Comm_get_attr(dup, key, val, flag, ierr)
  if (.not. flag .or. val /= 12346) errs = errs + 1
  call MPI_Comm_free(dup, ierr)
  if (deleted /= 1) errs = errs + 1

  ! Set in C, read in Fortran: the pointer's value.
  call c_set_attr(MPI_COMM_WORLD, ckey, addr)
  call MPI_Comm_get_attr(MPI_COMM_WORLD, ckey, val, flag, ierr)
  if (.not. flag .or. val /= addr) errs = errs + 1
  call MPI_Comm_delete_attr(MPI_COMM_WORLD, ckey, ierr)
  call MPI_Comm_free_keyval(ckey, ierr)

  ! MPI-1's INTEGER attributes: read in C as a pointer to the value.
  call MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, key1, 0, ierr)
  call MPI_Attr_put(MPI_COMM_WORLD, key1, 777, ierr)
  call c_read_attr(MPI_COMM_WORLD, key1, 777_MPI_ADDRESS_KIND, ok)
  if (ok /= 1) errs = errs + 1
  call MPI_Attr_get(MPI_COMM_WORLD, key1, v4, flag, ierr)
  if (.not. flag .or. v4 /= 777) errs = errs + 1
  call MPI_Attr_delete(MPI_COMM_WORLD, key1, ierr)
  call MPI_Keyval_free(key1, ierr)

  call MPI_Comm_delete_attr(MPI_COMM_WORLD, key, ierr)
  call MPI_Comm_free_keyval(key, ierr)
  call MPI_Reduce(errs, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. total == 0) print '(a)', 'PASS attrlang'
  if (rank == 0 .and. total /= 0) print '(a,i0)', 'FAIL attrlang: errors ', total
  call MPI_Finalize(ierr)
end program attrlang
