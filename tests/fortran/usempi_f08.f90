! `use mpi_f08`: derived-type handles and their comparisons, MPI_Status
! components, ierror left out, request arrays (waitall, waitany), matched
! probe (MPI_Message), a user reduction with mpi_f08's interface (C
! pointers, MPI_User_function), MPI_IN_PLACE at the root of a reduce, a
! vector type, strings,
! kinds through MPI_Type_create_f90_*.
! Prints PASS usempi_f08.

! The user reduction: elementwise maximum of absolute values, in mpi_f08's
! form (buffers as C pointers by value).
module f08_ops
  use mpi_f08
  use, intrinsic :: iso_c_binding
  implicit none
contains
  subroutine absmax(invec, inoutvec, len, datatype)
    type(c_ptr), value :: invec, inoutvec
    integer :: len
    type(MPI_Datatype) :: datatype
    real(8), pointer :: a(:), b(:)
    integer :: i
    call c_f_pointer(invec, a, [len])
    call c_f_pointer(inoutvec, b, [len])
    if (datatype /= MPI_DOUBLE_PRECISION) then
      b = -1
      return
    end if
    do i = 1, len
      b(i) = max(abs(a(i)), abs(b(i)))
    end do
  end subroutine absmax
end module f08_ops

program usempi_f08
  use mpi_f08
  use f08_ops
  implicit none
  type(MPI_Comm) :: comm, half
  type(MPI_Status) :: st, sts(2)
  type(MPI_Request) :: reqs(2)
  type(MPI_Datatype) :: vec, f90t
  type(MPI_Op) :: op
  type(MPI_Message) :: msg
  procedure(MPI_User_function), pointer :: user_fn
  integer :: rank, np, left, right, errs, total, i, idx, cnt, ierr, size
  integer :: sbuf(6), rbuf(6), cols(3, 4), col(4)
  real(8) :: x(3), y(3)
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: version
  character(len=16) :: word
  integer :: vlen
  integer(kind=selected_int_kind(15)) :: big, bigsum

  errs = 0
  call MPI_Init()
  comm = MPI_COMM_WORLD
  call MPI_Comm_rank(comm, rank)
  call MPI_Comm_size(comm, np, ierr)
  if (ierr /= MPI_SUCCESS) errs = errs + 1
  if (comm /= MPI_COMM_WORLD .or. .not. (comm == MPI_COMM_WORLD)) errs = errs + 1
  left = mod(rank + np - 1, np)
  right = mod(rank + 1, np)

  ! Two receives in a request array; the status components.
  sbuf = [(rank * 10 + i, i = 1, 6)]
  call MPI_Irecv(rbuf, 6, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, reqs(1))
  call MPI_Isend(sbuf, 6, MPI_INTEGER, right, 11 + rank, comm, reqs(2))
  call MPI_Waitall(2, reqs, sts)
  if (sts(1)%MPI_SOURCE /= left .or. sts(1)%MPI_TAG /= 11 + left) errs = errs + 1
  call MPI_Get_count(sts(1), MPI_INTEGER, cnt)
  if (cnt /= 6 .or. rbuf(6) /= left * 10 + 6) errs = errs + 1
  if (reqs(1) /= MPI_REQUEST_NULL) errs = errs + 1

  call MPI_Isend(sbuf, 2, MPI_INTEGER, right, 12, comm, reqs(1))
  call MPI_Irecv(rbuf, 2, MPI_INTEGER, left, 12, comm, reqs(2))
  do i = 1, 2
    call MPI_Waitany(2, reqs, idx, st)
    if (idx < 1 .or. idx > 2) errs = errs + 1
  end do
  if (rbuf(2) /= left * 10 + 2) errs = errs + 1

  ! A matched probe and its receive.
  call MPI_Send(sbuf, 3, MPI_INTEGER, right, 13, comm)
  call MPI_Mprobe(left, 13, comm, msg, st)
  call MPI_Get_count(st, MPI_INTEGER, cnt)
  call MPI_Mrecv(rbuf, cnt, MPI_INTEGER, msg, MPI_STATUS_IGNORE)
  if (cnt /= 3 .or. rbuf(3) /= left * 10 + 3) errs = errs + 1

  ! A user reduction with mpi_f08's interface.
  ! Through a pointer of mpi_f08's abstract interface, which absmax matches.
  user_fn => absmax
  call MPI_Op_create(user_fn, .true., op)
  x = [-dble(rank), dble(rank) * 0.5d0, merge(-1.0d0, 1.0d0, rank > 0)]
  call MPI_Allreduce(x, y, 3, MPI_DOUBLE_PRECISION, op, comm)
  if (y(1) /= np - 1 .or. y(2) /= (np - 1) * 0.5d0 .or. y(3) /= 1.0d0) errs = errs + 1
  call MPI_Op_free(op)
  if (op /= MPI_OP_NULL) errs = errs + 1

  ! MPI_IN_PLACE at the root of a reduce.
  x = [1.0d0, dble(rank), 2.0d0]
  if (rank == 0) then
    call MPI_Reduce(MPI_IN_PLACE, x, 3, MPI_DOUBLE_PRECISION, MPI_SUM, 0, comm)
    if (x(1) /= np .or. x(2) /= np * (np - 1) / 2) errs = errs + 1
  else
    call MPI_Reduce(x, y, 3, MPI_DOUBLE_PRECISION, MPI_SUM, 0, comm)
  end if

  ! A row of a 3x4 matrix as a vector type, broadcast from the last rank.
  cols = 0
  if (rank == np - 1) cols(2, :) = [5, 6, 7, 8]
  call MPI_Type_vector(4, 1, 3, MPI_INTEGER, vec)
  call MPI_Type_commit(vec)
  call MPI_Type_size(vec, size)
  if (size /= 16) errs = errs + 1
  call MPI_Bcast(cols(2, 1), 1, vec, np - 1, comm)
  col = cols(2, :)
  if (any(col /= [5, 6, 7, 8]) .or. cols(1, 1) /= 0) errs = errs + 1
  call MPI_Type_free(vec)

  ! Split, strings, barrier.
  call MPI_Comm_split(comm, mod(rank, 2), rank, half)
  call MPI_Comm_size(half, size)
  if (size /= (np + 1 - mod(rank, 2)) / 2) errs = errs + 1
  call MPI_Comm_free(half)
  if (half /= MPI_COMM_NULL) errs = errs + 1
  call MPI_Get_library_version(version, vlen)
  if (index(version, 'wanmpi') == 0 .or. vlen <= 0) errs = errs + 1
  word = ''
  if (rank == 0) word = 'fortran 2008'
  call MPI_Bcast(word, 16, MPI_CHARACTER, 0, comm)
  if (word /= 'fortran 2008') errs = errs + 1
  call MPI_Barrier(comm)

  ! Kinds through MPI_Type_create_f90_*.
  call MPI_Type_create_f90_real(12, MPI_UNDEFINED, f90t)
  call MPI_Type_size(f90t, size)
  if (size /= 8) errs = errs + 1
  call MPI_Type_create_f90_integer(15, f90t)
  big = 2_8**40 + rank
  call MPI_Allreduce(big, bigsum, 1, f90t, MPI_SUM, comm)
  if (bigsum /= np * 2_8**40 + np * (np - 1) / 2) errs = errs + 1

  ! MPI_SIZEOF, ierror optional.
  call MPI_Sizeof(x, size)
  if (size /= 8) errs = errs + 1
  call MPI_Sizeof(1.0, size, ierr)
  if (size /= 4 .or. ierr /= MPI_SUCCESS) errs = errs + 1

  call MPI_Reduce(errs, total, 1, MPI_INTEGER, MPI_SUM, 0, comm)
  if (rank == 0 .and. total == 0) print '(a)', 'PASS usempi_f08'
  if (rank == 0 .and. total /= 0) print *, 'FAIL', total
  call MPI_Finalize()
end program usempi_f08
